// AR(K) series (posteriordb arK-like, sigma known): y[t] enters later lags; the first K values
// are conditioned on.
data {
  int<lower=0> K;
  int<lower=0> T;
  array[T] real y;
  real<lower=0> sigma;
}
parameters {
  real alpha;
  vector[K] beta;
}
model {
  alpha ~ normal(0, 10);
  beta ~ normal(0, 10);
  for (t in (K + 1):T) {
    real m = alpha;
    for (k in 1:K)
      m += beta[k] * y[t - k];
    y[t] ~ normal(m, sigma);
  }
}
