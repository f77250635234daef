// Simulation program for lowrank.stan: factors and noise scale from the prior, then Y.
data {
  int<lower=1> N;
  int<lower=1> M;
  int<lower=1> R;
}
generated quantities {
  matrix[N, R] U;
  matrix[R, M] V;
  real sigma = lognormal_rng(-1, 0.25);
  matrix[N, M] Y;
  for (i in 1:N) {
    for (r in 1:R) {
      U[i, r] = std_normal_rng();
    }
  }
  for (r in 1:R) {
    for (j in 1:M) {
      V[r, j] = std_normal_rng();
    }
  }
  for (i in 1:N) {
    for (j in 1:M) {
      Y[i, j] = normal_rng(dot_product(U[i], V[:, j]), sigma);
    }
  }
}
