// Eight schools, non-centered, half-Cauchy(0, 5) on tau (benchmarks/evidence.py: eight_schools).
data {
  int<lower=0> J;
  vector[J] y;
  vector<lower=0>[J] sigma;
}
parameters {
  real mu;
  real<lower=0> tau;
  vector[J] eta;
}
model {
  target += normal_lpdf(mu | 0, 5);
  target += cauchy_lpdf(tau | 0, 5) + log2();  // half-Cauchy: normalized on tau > 0
  target += normal_lpdf(eta | 0, 1);
  target += normal_lpdf(y | mu + tau * eta, sigma);
}
