// Point null of the calibration pair: y ~ normal(0, sigma), no parameter; log Z is exact.
data {
  int<lower=0> N;
  vector[N] y;
  real<lower=0> sigma;
  real<lower=0> tau;  // unused; both programs read the same data
}
model {
  y ~ normal(0, sigma);
}
