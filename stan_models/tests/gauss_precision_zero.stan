// Hostile inner program for pmmh: reads the precision tau as data like gauss_precision_inner,
// but its density is zero everywhere, so every importance weight of Z(tau) is zero.
data {
  int<lower=1> N;
  real<lower=0> tau;
}
parameters {
  vector[N] x;
}
model {
  target += negative_infinity();
}
