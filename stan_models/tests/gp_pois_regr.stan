// posteriordb's gp_pois_regr program (a latent GP under Poisson counts k). Its data file
// (gp_pois_regr.json, posteriordb's) also holds a real array y that this program does not
// declare (gp_regr's outcome): stanlogz must not take y for the outcome (issue 44 item 5).
data {
  int<lower=1> N;
  array[N] real x;
  array[N] int k;
}
parameters {
  real<lower=0> rho;
  real<lower=0> alpha;
  vector[N] f_tilde;
}
transformed parameters {
  vector[N] f;
  {
    matrix[N, N] cov;
    matrix[N, N] L_cov;
    cov = gp_exp_quad_cov(x, alpha, rho) + diag_matrix(rep_vector(1e-10, N));
    L_cov = cholesky_decompose(cov);
    f = L_cov * f_tilde;
  }
}
model {
  rho ~ gamma(25, 4);
  alpha ~ normal(0, 2);
  f_tilde ~ normal(0, 1);
  k ~ poisson_log(f);
}
