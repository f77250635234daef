// Hierarchical logistic regression: G groups with varying intercepts (non-centred) and a common
// slope; every density normalized, so log Z is the marginal likelihood.
data {
  int<lower=1> N;
  int<lower=1> G;
  array[N] int<lower=1, upper=G> g;
  vector[N] x;
  array[N] int<lower=0, upper=1> y;
}
parameters {
  real alpha;
  real beta;
  real<lower=0> tau;
  vector[G] z;
}
model {
  target += normal_lpdf(alpha | 0, 2);
  target += normal_lpdf(beta | 0, 2);
  target += normal_lpdf(tau | 0, 1) + log2();  // half-normal(0, 1), normalized
  target += std_normal_lpdf(z);
  target += bernoulli_logit_lpmf(y | alpha + tau * z[g] + beta * x);
}
