// Logistic regression of switching wells on distance and arsenic level, the shape of the classic
// arsenic-wells analysis (3,020 households). The data in wells.data.json are simulated
// (examples/README.md says how); the program has no log_lik generated quantity on purpose:
// `stanlogz loo` computes the pointwise log-likelihood from the program's own density.
data {
  int<lower=1> N;
  vector[N] dist100;   // distance to the nearest safe well, in 100 m
  vector[N] arsenic;   // arsenic level of the household's well
  array[N] int<lower=0, upper=1> switched;
}
parameters {
  real alpha;
  real b_dist;
  real b_arsenic;
}
model {
  alpha ~ normal(0, 2.5);
  b_dist ~ normal(0, 2.5);
  b_arsenic ~ normal(0, 2.5);
  switched ~ bernoulli_logit(alpha + b_dist * dist100 + b_arsenic * arsenic);
}
