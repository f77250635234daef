// Issue 44 case 1, count outcome: one normal latent per observation in a Poisson log-linear model
// with unknown mean mu and scale tau, a log_lik conditional on the latent, and int<lower=1> N
// (the program refuses data with no observation). Exact LOO: a 2-D quadrature over (mu, tau)
// with p(y_i | mu, tau) = ∫ Poisson(y_i | exp(mu + tau z)) N(z | 0, 1) dz by Gauss-Hermite.
data {
  int<lower=1> N;
  array[N] int<lower=0> y;
}
parameters {
  real mu;
  real<lower=0> tau;
  vector[N] z;
}
model {
  mu ~ normal(1, 1);
  tau ~ lognormal(-0.5, 0.5);
  z ~ std_normal();
  y ~ poisson_log(mu + tau * z);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) log_lik[n] = poisson_log_lpmf(y[n] | mu + tau * z[n]);
}
