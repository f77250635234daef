// What the interpreter's batched density-difference pass (stanlogz.stan.interpreted_pointwise)
// must read: a user function, transformed data from each observation, constrained parameters
// (a Jacobian), a bounded transformed parameter, a matrix and an integer array per observation,
// a '~' over two lines, a brace-less loop, target += and N >= 1 (so the baseline instance holds
// a reference observation). Its pointwise log-likelihood is closed-form
// (tests/stan/test_interpreted_pointwise.py).
functions {
  real shift(real a, real b) {
    return a + b;
  }
}
data {
  int<lower=1> N;
  matrix[N, 2] X;
  vector[N] y;
  array[N] int<lower=0> k;
  real<lower=0> scale;
}
transformed data {
  vector[N] ylog = log1p(y .* y);
}
parameters {
  vector[2] beta;
  real<lower=0> sigma;
  simplex[3] w;
}
transformed parameters {
  real<lower=0> lam = exp(shift(beta[1], w[1]));
}
model {
  beta ~ normal(0, scale);
  sigma ~ lognormal(0,
                    1);
  w ~ dirichlet(rep_vector(2, 3));
  y ~ normal(X * beta, sigma);
  for (n in 1:N)
    k[n] ~ poisson(lam);
  target += normal_lpdf(ylog | w[2], 1 + sigma);
}
