// Closed data: the observations must add up to a known total (shares of a whole), so no
// observation can be changed with the others held fixed.
data {
  int<lower=1> N;
  vector[N] y;
  real total;
}
transformed data {
  if (sum(y) != total)
    reject("y must add up to total");
}
parameters {
  real mu;
}
model {
  mu ~ normal(0, 5);
  y ~ normal(mu, 1);
}
