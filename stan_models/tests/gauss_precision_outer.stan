// Outer program of the simplest doubly-intractable posterior (see gauss_precision_inner.stan):
// y (N values) are independent normal(0, 1/sqrt(tau)) with the unnormalized likelihood
// p*(y | tau) = exp(-tau / 2 * sum(y^2)), tau ~ gamma(a, b). The missing normalizer is
// Z(tau) = (2 pi / tau)^(N/2), so the exact posterior is gamma(a + N/2, b + sum(y^2) / 2).
data {
  int<lower=1> N;
  vector[N] y;
  real<lower=0> a;
  real<lower=0> b;
}
parameters {
  real<lower=0> tau;
}
model {
  tau ~ gamma(a, b);
  target += -0.5 * tau * dot_self(y);
}
