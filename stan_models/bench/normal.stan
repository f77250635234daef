// Conjugate normal mean (benchmarks/evidence.py: normal). Full density, constants kept.
data {
  int<lower=1> N;
  vector[N] y;
  real<lower=0> sigma;
  real<lower=0> s0;
}
parameters {
  real mu;
}
model {
  target += normal_lpdf(mu | 0, s0);
  target += normal_lpdf(y | mu, sigma);
}
