// Each y_i also enters a term of its own outside its likelihood (target += 0.5 y_i), so the
// terms y_i enters integrate to exp(0.5 mu + 0.125), not one, and shares no term with the
// other observations: exact refits are refused for that, not for "y_i enters other terms".
data {
  int<lower=1> N;
  vector[N] y;
}
parameters {
  real mu;
}
model {
  mu ~ normal(0, 3);
  y ~ normal(mu, 1);
  target += 0.5 * sum(y);
}
