// Inner program of gauss_precision_outer.stan: p*(x | tau) = exp(-tau / 2 * sum(x^2)) on R^N
// with the precision tau as data; its normalizer is (2 pi / tau)^(N/2).
data {
  int<lower=1> N;
  real<lower=0> tau;
}
parameters {
  vector[N] x;
}
model {
  target += -0.5 * tau * dot_self(x);
}
