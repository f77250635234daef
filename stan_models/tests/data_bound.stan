// Uniform(0, theta) observations: theta's lower bound is max(y), a constraint that depends on the
// data, so one unconstrained draw means another theta in each data instance (must be refused).
data {
  int<lower=0> N;
  vector<lower=0>[N] y;
}
parameters {
  real<lower=(N > 0 ? max(y) : 0)> theta;
}
model {
  theta ~ pareto(0.1, 1.5);
  y ~ uniform(0, theta);
}
