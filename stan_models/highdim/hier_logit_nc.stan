// Non-centred hierarchical logistic: J groups of binomial counts, varying intercepts; every
// density normalized, so log Z is p(y). Given (mu, tau) the groups are independent, so log Z
// is a 2-D quadrature of a product of 1-D ones (stanlogz.densities.hier_logit).
data {
  int<lower=1> J;
  array[J] int<lower=1> n;
  array[J] int<lower=0> y;
}
parameters {
  real mu;
  real<lower=0> tau;
  vector[J] eta;
}
model {
  target += normal_lpdf(mu | 0, 2);
  target += normal_lpdf(tau | 0, 1) + log2();  // half-normal(0, 1), normalized
  target += std_normal_lpdf(eta);
  target += binomial_logit_lpmf(y | n, mu + tau * eta);
}
