// Ordinal outcome y in 1..K: ordered probit regression on one predictor.
// Paired with ordinal_logit.stan and ordinal_null.stan in docs/tutorials/ordinal_measures.md.
data {
  int<lower=1> N;
  int<lower=2> K;
  vector[N] x;
  array[N] int<lower=1, upper=K> y;
}
parameters {
  real beta;
  ordered[K - 1] c;
}
model {
  beta ~ normal(0, 2);
  c ~ normal(0, 3);
  y ~ ordered_probit(beta * x, c);
}
generated quantities {
  array[N] int y_rep;
  for (n in 1:N) y_rep[n] = ordered_probit_rng(beta * x[n], c);
}
