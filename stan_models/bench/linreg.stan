// Conjugate Bayesian linear regression with known noise (benchmarks/evidence.py: linreg).
data {
  int<lower=1> N;
  int<lower=1> K;
  matrix[N, K] X;
  vector[N] y;
}
parameters {
  vector[K] beta;
}
model {
  target += normal_lpdf(beta | 0, 2);
  target += normal_lpdf(y | X * beta, 1);
}
