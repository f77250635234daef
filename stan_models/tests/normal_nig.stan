// Normal with unknown mean and variance under the conjugate normal-inverse-gamma prior:
//   y[n] ~ normal(mu, sigma),  mu | sigma ~ normal(0, sigma * s0),  sigma^2 ~ inv_gamma(a0, b0).
// The posterior is not Gaussian on the unconstrained scale (mu, log sigma^2), so evidence
// estimators have a real Monte Carlo error, yet the posterior (exact draws) and every evidence
// are closed form: with k = 1 / s0^2 + N, a = a0 + N / 2,
// b = b0 + (sum y^2 - (sum y)^2 / k) / 2,
//   log Z = lgamma(a) - lgamma(a0) + a0 log b0 - a log b - log(s0^2 k) / 2 - N log(2 pi) / 2.
data {
  int<lower=1> N;
  vector[N] y;
  real<lower=0> s0;
  real<lower=0> a0;
  real<lower=0> b0;
}
parameters {
  real mu;
  real<lower=0> sigma2;
}
model {
  real sigma = sqrt(sigma2);
  sigma2 ~ inv_gamma(a0, b0);
  mu ~ normal(0, sigma * s0);
  y ~ normal(mu, sigma);
}
