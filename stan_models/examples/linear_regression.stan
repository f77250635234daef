// Linear regression with a flat prior on beta and p(sigma^2) ∝ 1/sigma^2, i.e. p(sigma) ∝
// 1/sigma (paper 000 §3.3). The priors are improper, so log Z does not exist, but every
// posterior given at least K + 1 observations is proper, and the predictive of held-out y_V
// given the training set T is a multivariate Student-t in closed form:
//   y_V | y_T ~ t_{n_T-K}(X_V b, s^2 (I + X_V (X_T'X_T)^-1 X_V')),  b, s^2 least squares on T.
// Data: stackloss.data.json (Brownlee 1965; R datasets::stackloss; observation 21 is
// influential, PSIS's Pareto k-hat is high there) and mammals.data.json (MASS::mammals: log
// brain weight on log body weight, 62 species).
data {
  int<lower=1> N;
  int<lower=1> K;
  matrix[N, K] X;
  vector[N] y;
}
parameters {
  vector[K] beta;
  real<lower=0> sigma;
}
model {
  target += -log(sigma);  // p(sigma^2) ∝ 1/sigma^2 on the sigma scale
  y ~ normal(X * beta, sigma);
}
generated quantities {
  vector[N] log_lik;
  array[N] real y_rep;  // posterior predictive draws (squared-error cross-validation)
  for (n in 1:N) {
    log_lik[n] = normal_lpdf(y[n] | X[n] * beta, sigma);
    y_rep[n] = normal_rng(X[n] * beta, sigma);
  }
}
