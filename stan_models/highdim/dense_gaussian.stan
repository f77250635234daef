// A normalized Gaussian with a dense covariance L L' (log Z = 0 exactly).
data {
  int<lower=1> D;
  vector[D] m;
  matrix[D, D] L;
}
parameters {
  vector[D] x;
}
model {
  target += multi_normal_cholesky_lpdf(x | m, L);
}
