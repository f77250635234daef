// The outcome is centred in transformed data (the mean of all observations): a single
// observation's density-difference term is then not its log-likelihood, which stanlogz must
// detect and refuse.
data {
  int<lower=2> N;
  vector[N] y;
}
transformed data {
  vector[N] z = y - mean(y);  // (y - mean) / sd would make the density depend on N only
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
