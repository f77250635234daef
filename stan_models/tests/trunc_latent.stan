// A positive latent per observation with a normal prior written without T[,]: the prior term is
// half of a normalized density (an unnormalized truncation), for every observation.
data {
  int<lower=0> N;
  vector[N] y;
}
parameters {
  real mu;
  vector<lower=0>[N] z;
}
model {
  mu ~ normal(0, 1);
  z ~ normal(0, 1);
  y ~ normal(mu + z, 1);
}
