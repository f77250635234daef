// Cyclic ring, Jia & Seljak eq. 7 with the square that matches their fiducial log Z, and the
// constant density of the box prior U(-5,5)^N (benchmarks/evidence.py: ring64).
data {
  int<lower=3> N;
}
parameters {
  vector[N] x;
}
model {
  target += -N * log(10);
  for (i in 1:N) {
    int j = i == N ? 1 : i + 1;
    target += -square(square(x[i]) + square(x[j]) - 2);
  }
}
