// Intercept-only regression (beta = 0), the null of bf_regression.stan; accepts N = 0.
// For regression.data.json, log Z = -35.416101: given sigma the coefficients integrate out
// analytically (y | sigma ~ MVN(0, sigma^2 I + X S X')), leaving a 1-D quadrature over
// sigma (scipy.integrate.quad, relative error < 1e-12).
data {
  int<lower=0> N;
  vector[N] x;  // unused; kept so both programs read the same data file
  vector[N] y;
}
parameters {
  real alpha;
  real<lower=0> sigma;
}
model {
  alpha ~ normal(0, 2);
  target += normal_lpdf(sigma | 0, 1) + log(2);  // normalized half-normal(0, 1)
  y ~ normal(alpha, sigma);
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) log_lik[n] = normal_lpdf(y[n] | alpha, sigma);
}
