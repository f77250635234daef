// A regression on a covariate standardized in transformed data (posteriordb's
// logearn_interaction_z): deleting an observation moves every z, so the density difference is
// not a pointwise log-likelihood, and no array is named y.
data {
  int<lower=0> N;
  vector[N] a;
  vector[N] b;
}
transformed data {
  vector[N] z = (b - mean(b)) / sd(b);
}
parameters {
  real c;
  real<lower=0> s;
}
model {
  c ~ normal(0, 1);
  s ~ normal(0, 1);
  a ~ normal(c * z, s);
}
