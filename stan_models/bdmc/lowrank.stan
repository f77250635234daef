// Low-rank matrix factorization Y = U V + noise (rank R), standard normal factors and a
// lognormal noise scale. The posterior is invariant under rotations of the factors.
data {
  int<lower=1> N;
  int<lower=1> M;
  int<lower=1> R;
  matrix[N, M] Y;
}
parameters {
  matrix[N, R] U;
  matrix[R, M] V;
  real<lower=0> sigma;
}
model {
  target += std_normal_lpdf(to_vector(U));
  target += std_normal_lpdf(to_vector(V));
  target += lognormal_lpdf(sigma | -1, 0.25);
  target += normal_lpdf(to_vector(Y) | to_vector(U * V), sigma);
}
