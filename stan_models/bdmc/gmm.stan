// Gaussian mixture with K components in 1-d, known component sd, assignments marginalized.
// The means are ordered to remove label switching (density = iid normal prior restricted to
// the ordered cone, so log Z is log p(y) - log K!).
data {
  int<lower=1> N;
  int<lower=1> K;
  vector[N] y;
  real<lower=0> sigma;
  real<lower=0> tau;
}
parameters {
  ordered[K] mu;
  simplex[K] w;
}
model {
  vector[K] log_w = log(w);
  target += normal_lpdf(mu | 0, tau);
  target += dirichlet_lpdf(w | rep_vector(2, K));
  for (n in 1:N) {
    vector[K] lp = log_w;
    for (k in 1:K) {
      lp[k] += normal_lpdf(y[n] | mu[k], sigma);
    }
    target += log_sum_exp(lp);
  }
}
