// Constrained types that CmdStan's 6-digit CSV output breaks: a simplex, a Cholesky factor of
// a correlation matrix, an ordered vector and an interval-bounded probability, all informed by
// the data (y: two-component normal mixture; z: trivariate normal draws with correlation L L').
data {
  int<lower=1> N;
  vector[N] y;
  array[N] vector[3] z;
}
parameters {
  simplex[3] w;
  cholesky_factor_corr[3] L;
  ordered[2] mu;
  real<lower=0, upper=1> p;
}
model {
  w ~ dirichlet([2, 2, 2]');
  L ~ lkj_corr_cholesky(2);
  mu ~ normal(0, 3);
  p ~ beta(2, 2);
  for (n in 1:N) {
    target += log_mix(p, normal_lpdf(y[n] | mu[1], 1), normal_lpdf(y[n] | mu[2], 1));
    target += multi_normal_cholesky_lpdf(z[n] | 3 * w, L);
  }
}
generated quantities {
  vector[N] log_lik;
  for (n in 1:N) {
    log_lik[n] = log_mix(p, normal_lpdf(y[n] | mu[1], 1), normal_lpdf(y[n] | mu[2], 1))
                 + multi_normal_cholesky_lpdf(z[n] | 3 * w, L);
  }
}
