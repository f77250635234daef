// Linear regression on the stack-loss data (Brownlee 1965; R datasets::stackloss), as in
// Peruggia (1997), Vehtari et al. (2017) and paper 000 §3.3.2: flat prior on beta and
// p(sigma^2) ∝ 1/sigma^2, i.e. p(sigma) ∝ 1/sigma. The priors are improper, so log Z does not
// exist, but every leave-one-out posterior is proper and the LOO predictive of y_i given the
// other observations is a Student-t in closed form:
//   y_i | y_-i ~ t_{n-1-K}(x_i' b, s^2 (1 + x_i' (X'X)^-1 x_i)),  b, s^2 from least squares on y_-i.
// Observation 21 is influential: PSIS's Pareto k-hat is high there.
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
  for (n in 1:N) log_lik[n] = normal_lpdf(y[n] | X[n] * beta, sigma);
}
