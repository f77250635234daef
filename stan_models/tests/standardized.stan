// The outcome is standardized in transformed data ((y - mean) / sd over all observations), as
// posteriordb's earnings programs do with height: with one observation sd is 0, the baseline
// instance's log density is -inf and the density-difference terms are not finite, which
// stanlogz must detect rather than pass on.
data {
  int<lower=1> N;
  vector[N] y;
}
transformed data {
  vector[N] z = (y - mean(y)) / sd(y);
}
parameters {
  real mu;
  real<lower=0> sigma;
}
model {
  mu ~ normal(0, 1);
  sigma ~ exponential(1);
  z ~ normal(mu, sigma);
}
