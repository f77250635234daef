// A location with no prior at all (flat on the real line): log Z does not exist. The scale's
// half-normal prior is normalized by its truncation.
data {
  int<lower=0> N;
  vector[N] y;
}
parameters {
  real mu;
  real<lower=0> sigma;
}
model {
  sigma ~ normal(0, 1) T[0, ];
  y ~ normal(mu, sigma);
}
