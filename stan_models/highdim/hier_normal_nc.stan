// Non-centred hierarchical normal with J groups; every density normalized, so log Z is the
// marginal likelihood p(y) (benchmarks/high_dim.py computes it by quadrature over tau).
data {
  int<lower=1> J;
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
  target += normal_lpdf(tau | 0, 2) + log2();  // half-normal(0, 2), normalized
  target += std_normal_lpdf(eta);
  target += normal_lpdf(y | mu + tau * eta, sigma);
}
