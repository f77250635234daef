// A non-factorized likelihood: y ~ multivariate normal with AR(1) errors (rho, sigma known)
// around an unknown level mu. No log_lik: y_i enters every term.
data {
  int<lower=1> N;
  vector[N] y;
  real<lower=-1, upper=1> rho;
  real<lower=0> sigma;
}
transformed data {
  matrix[N, N] S;
  for (i in 1:N)
    for (j in 1:N)
      S[i, j] = sigma^2 * rho^abs(i - j);
  matrix[N, N] L = cholesky_decompose(S);
}
parameters {
  real mu;
}
model {
  mu ~ normal(0, 3);
  y ~ multi_normal_cholesky(rep_vector(mu, N), L);
}
