// Conjugate normal mean with known noise: log Z is analytic (y ~ N(0, sigma^2 I + tau^2 11')).
data {
  int<lower=1> N;
  vector[N] y;
  real<lower=0> sigma;
  real<lower=0> tau;
}
parameters {
  real mu;
}
model {
  target += normal_lpdf(mu | 0, tau);
  target += normal_lpdf(y | mu, sigma);
}
