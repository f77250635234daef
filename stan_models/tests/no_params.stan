// Hostile-input test program: data and a likelihood-free model block, but no parameters.
data {
  int<lower=0> N;
  vector[N] y;
}
model {
}
