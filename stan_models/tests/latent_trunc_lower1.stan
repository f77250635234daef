// Issue 44 case 1: one positive latent per observation, its half-normal prior written with
// T[0, ] (normalized), an unknown noise scale sigma, a log_lik conditional on the latent, and the
// size declared as real programs declare it, int<lower=1> N: the program refuses data with no
// observation, so the integrated route cannot use an empty instance as its baseline.
// p(y_i | sigma) = 2 N(y_i | 0, sqrt(1 + sigma^2)) Phi(y_i / (sigma sqrt(1 + sigma^2))).
data {
  int<lower=1> N;
  vector[N] y;
}
parameters {
  real<lower=0> sigma;
  vector<lower=0>[N] z;
}
model {
  sigma ~ lognormal(-0.7, 0.3);
  for (n in 1:N) z[n] ~ normal(0, 1) T[0, ];
  y ~ normal(z, sigma);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) log_lik[n] = normal_lpdf(y[n] | z[n], sigma);
}
