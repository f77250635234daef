// Constrained parameter types in one program: interval bounds, a simplex, a Cholesky factor of
// a correlation matrix, a positive rate inside an ODE, and a transformed parameter.
functions {
  vector decay(real t, vector y, real k) {
    return -k * y;
  }
}
data {
  int<lower=2> K;
  vector<lower=0>[K] alpha;
  int<lower=1> T;
  array[T] real ts;
  vector[T] obs;
}
parameters {
  real<lower=-1, upper=2> b;
  simplex[K] w;
  cholesky_factor_corr[3] L;
  real<lower=0> k;
}
transformed parameters {
  real b2 = square(b);
}
model {
  array[T] vector[1] sol = ode_rk45_tol(decay, [1.0]', 0.0, ts, 1e-10, 1e-10, 100000, k);
  b ~ normal(0.5, 1);
  w ~ dirichlet(alpha);
  L ~ lkj_corr_cholesky(2.0);
  k ~ lognormal(0, 0.5);
  for (t in 1:T) {
    obs[t] ~ normal(sol[t][1], 0.1);
  }
}
generated quantities {
  real k_rep = lognormal_rng(0, 0.5);
}
