// Complete pooling of the eight schools: one common effect mu, known standard errors.
data {
  int<lower=0> J;
  vector[J] y;
  vector<lower=0>[J] sigma;
}
parameters {
  real mu;
}
model {
  target += normal_lpdf(mu | 0, 5);
  target += normal_lpdf(y | mu, sigma);
}
generated quantities {
  vector[J] log_lik;
  for (j in 1:J) log_lik[j] = normal_lpdf(y[j] | mu, sigma[j]);
}
