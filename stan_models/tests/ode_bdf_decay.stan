// Exponential decay y(t) = exp(-k t) solved by the stiff (BDF) solver, whose Jacobian uses
// nested autodiff even when the log density is evaluated in doubles; ts in the data, the
// solution at each time observed with noise 0.1.
functions {
  vector decay(real t, vector y, real k) {
    return -k * y;
  }
}
data {
  int<lower=1> T;
  array[T] real ts;
  array[T] real y_obs;
}
transformed data {
  // an ODE solve while the data are read (the model's construction)
  real y_half = ode_bdf_tol(decay, [1.0]', 0.0, {0.5}, 1e-10, 1e-10, 100000, 1.0)[1][1];
}
parameters {
  real<lower=0> k;
}
model {
  array[T] vector[1] sol = ode_bdf_tol(decay, [1.0]', 0.0, ts, 1e-10, 1e-10, 100000, k);
  k ~ lognormal(0, 1);
  for (t in 1:T) {
    y_obs[t] ~ normal(sol[t][1], 0.1);
  }
}
generated quantities {
  real y_half_data = y_half;
  array[T] vector[1] fitted = ode_bdf_tol(decay, [1.0]', 0.0, ts, 1e-10, 1e-10, 100000, k);
}
