// A volatility-in-lag model whose first two values have no term of their own: y[1] enters
// nothing (its conditional under the program is flat) and y[2] only the scale of y[3] (a 1/|y|
// tail): both are improper, so no pointwise LOO exists for them.
data {
  int<lower=2> T;
  array[T] real y;
}
parameters {
  real mu;
  real<lower=0> s;
}
model {
  mu ~ normal(0, 5);
  s ~ lognormal(0, 1);
  for (t in 3:T)
    y[t] ~ normal(mu, s * sqrt(1 + square(y[t - 1] - mu)));
}
