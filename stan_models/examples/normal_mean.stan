// Normal mean with known noise and a normal prior: a conjugate model with a closed-form evidence.
//   y[n] ~ normal(mu, sigma),  mu ~ normal(0, prior_sd)
// Marginally y ~ MVN(0, sigma^2 I + prior_sd^2 * 1 1'), so
//   log Z = log MVN(y | 0, sigma^2 I + prior_sd^2 11')
// For normal_mean.data.json (N = 10, sigma = 1, prior_sd = 2) this is log Z = -13.275816
// (scipy.stats.multivariate_normal(zeros(10), eye(10) + 4 * ones((10, 10))).logpdf(y)).
data {
  int<lower=1> N;
  vector[N] y;
  real<lower=0> sigma;
  real<lower=0> prior_sd;
}
parameters {
  real mu;
}
model {
  mu ~ normal(0, prior_sd);
  y ~ normal(mu, sigma);
}
generated quantities {
  vector[N] log_lik;
  array[N] real y_rep;  // posterior predictive draws (squared-error cross-validation)
  for (n in 1:N) {
    log_lik[n] = normal_lpdf(y[n] | mu, sigma);
    y_rep[n] = normal_rng(mu, sigma);
  }
}
