// Logistic regression on a covariate centred in transformed data (as posteriordb's wells
// programs centre theirs): the mean is of all the data, so the density is not a sum of
// per-observation terms, and K-fold evaluates each held-out observation as the whole program.
data {
  int<lower=1> N;
  array[N] int<lower=0, upper=1> y;
  vector[N] x;
}
transformed data {
  vector[N] xc = x - mean(x);
}
parameters {
  real alpha;
  real beta;
}
model {
  alpha ~ normal(0, 2);
  beta ~ normal(0, 2);
  y ~ bernoulli_logit(alpha + beta * xc);
}
