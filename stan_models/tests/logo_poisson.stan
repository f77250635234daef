// Poisson counts with a random intercept per group: p(y_g | mu, tau) is a 1-D integral, so exact
// leave-one-group-out is that integral on a (mu, tau) grid (benchmarks/truths/crossval/
// truths_logo.py). Non-centred (a_g = mu + tau z_g): the centred form's funnel makes NUTS
// diverge on these data.
data {
  int<lower=0> N;
  int<lower=1> J;
  array[N] int<lower=1, upper=J> g;
  array[N] int<lower=0> y;
}
parameters {
  real mu;
  real<lower=0> tau;
  vector[J] z;
}
model {
  mu ~ normal(0, 2);
  tau ~ normal(0, 1);
  z ~ std_normal();
  y ~ poisson_log(mu + tau * z[g]);
}
