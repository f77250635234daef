// One latent parameter per observation: leaving an observation out changes the parameter
// count, which single-observation cross-validation must refuse (a test of the error).
data {
  int<lower=1> N;
  vector[N] y;
}
parameters {
  vector[N] z;
}
model {
  z ~ normal(0, 1);
  y ~ normal(z, 1);
}
