// Normal observations declared positive: the density is Gaussian in each y[n] by the program's
// text, but the declaration accepts y >= 0 only, so p(y_i | theta) is normalized over [0, inf):
// the Gaussian closed form holds only where its mass below 0 is negligible.
data {
  int<lower=1> N;
  vector<lower=0>[N] y;
}
parameters {
  real mu;
  real<lower=0> sigma;
}
model {
  mu ~ normal(0, 10);
  sigma ~ normal(0, 5);
  y ~ normal(mu, sigma);
}
