// Ordinal outcome y in 1..K without the predictor: category probabilities by cutpoints alone.
// Paired with ordinal_logit.stan and ordinal_probit.stan in docs/tutorials/ordinal_measures.md.
data {
  int<lower=1> N;
  int<lower=2> K;
  vector[N] x;
  array[N] int<lower=1, upper=K> y;
}
parameters {
  ordered[K - 1] c;
}
model {
  c ~ normal(0, 3);
  y ~ ordered_logistic(rep_vector(0, N), c);
}
generated quantities {
  array[N] int y_rep;
  for (n in 1:N) y_rep[n] = ordered_logistic_rng(0, c);
}
