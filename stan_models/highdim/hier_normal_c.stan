// Centred hierarchical normal with J groups; every density normalized (see hier_normal_nc.stan).
data {
  int<lower=1> J;
  vector[J] y;
  vector<lower=0>[J] sigma;
}
parameters {
  real mu;
  real<lower=0> tau;
  vector[J] theta;
}
model {
  target += normal_lpdf(mu | 0, 5);
  target += normal_lpdf(tau | 0, 2) + log2();  // half-normal(0, 2), normalized
  target += normal_lpdf(theta | mu, tau);
  target += normal_lpdf(y | theta, sigma);
}
