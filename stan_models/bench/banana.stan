// Randomly rotated banana, Jia & Seljak eq. 5, with the constant density of the box prior
// U(-15,15)^N but not the box itself (benchmarks/evidence.py: banana32).
data {
  int<lower=2> N;
  matrix[N, N] A;
  real<lower=0> Q;
}
parameters {
  vector[N] x;
}
model {
  vector[N] y = A * x;
  target += -N * log(30);
  for (i in 1:(N %/% 2)) {
    target += -square(square(y[2 * i - 1]) - y[2 * i]) / Q - square(y[2 * i - 1] - 1);
  }
}
