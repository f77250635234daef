// A two-mode prior whose far mode the precise observations rule out: the posterior given all
// data sits at +6, the one without them has a mode at 0 as well (the weak observations barely
// move either). Chains started at +6 (a warm refit) never see the mode at 0; chains started
// at Stan's random inits, uniform on (-2, 2), all fall into it. Closed form per mixture
// component (conjugate normals): tests/draws/test_modes.py.
data {
  int<lower=1> N;
  vector[N] y;
  vector<lower=0>[N] s;
  array[N] int<lower=1> g;
}
parameters {
  real theta;
}
model {
  target += log_mix(0.5, normal_lpdf(theta | 0, 0.4), normal_lpdf(theta | 6, 0.4));
  y ~ normal(theta, s);
}
