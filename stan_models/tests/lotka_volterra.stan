// Lotka-Volterra predator-prey populations (Carpenter's case study, as in posteriordb's
// lotka_volterra; Hudson's Bay Company lynx and hare pelts 1900-1920): an ODE whose
// solver error makes the density difference's terms sum to the whole data's difference
// within 1e-7 of its scale, not to rounding.
functions {
  array[] real dz_dt(real t, array[] real z, array[] real theta,
                     array[] real x_r, array[] int x_i) {
    real u = z[1];
    real v = z[2];
    real du_dt = (theta[1] - theta[2] * v) * u;
    real dv_dt = (-theta[3] + theta[4] * u) * v;
    return {du_dt, dv_dt};
  }
}
data {
  int<lower=0> N;
  array[N] real ts;
  array[2] real y_init;
  array[N, 2] real<lower=0> y;
}
parameters {
  array[4] real<lower=0> theta;
  array[2] real<lower=0> z_init;
  array[2] real<lower=0> sigma;
}
transformed parameters {
  array[N, 2] real z = integrate_ode_rk45(dz_dt, z_init, 0, ts, theta,
                                          rep_array(0.0, 0), rep_array(0, 0),
                                          1e-5, 1e-3, 5e2);
}
model {
  theta[{1, 3}] ~ normal(1, 0.5);
  theta[{2, 4}] ~ normal(0.05, 0.05);
  sigma ~ lognormal(-1, 1);
  z_init ~ lognormal(log(10), 1);
  for (k in 1:2) {
    y_init[k] ~ lognormal(log(z_init[k]), sigma[k]);
    y[ : , k] ~ lognormal(log(z[ : , k]), sigma[k]);
  }
}
