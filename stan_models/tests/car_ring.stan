// CAR-like latent field on a ring of N sites (neighbours i-1, i+1): precision tau (D - alpha W).
data {
  int<lower=0> N;
  vector[N] y;
  real<lower=0> tau;
  real<lower=0, upper=1> alpha;
  real<lower=0> sigma_y;
}
transformed data {
  matrix[N, N] Q = rep_matrix(0, N, N);
  for (i in 1:N) {
    Q[i, i] = 2 * tau;
    if (N > 1) {
      int j = i == N ? 1 : i + 1;
      Q[i, j] += -alpha * tau;
      Q[j, i] += -alpha * tau;
    }
  }
}
parameters {
  vector[N] phi;
}
model {
  if (N > 0)
    phi ~ multi_normal_prec(rep_vector(0, N), Q);
  y ~ normal(phi, sigma_y);
}
