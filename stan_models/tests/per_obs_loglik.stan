// One latent effect per observation (random-effects normal) with a log_lik generated quantity:
// PSIS-LOO from log_lik works; leaving an observation out changes the parameter count.
data {
  int<lower=1> N;
  vector[N] y;
}
parameters {
  real mu;
  real<lower=0> tau;
  vector[N] z;
}
model {
  mu ~ normal(0, 5);
  tau ~ exponential(1);
  z ~ normal(0, 1);
  y ~ normal(mu + tau * z, 1);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) log_lik[n] = normal_lpdf(y[n] | mu + tau * z[n], 1);
}
