# Linear regression by hand: build a design matrix, solve the normal
# equations (X^T X) w = X^T y with Gaussian elimination written in arr,
# and check the fit.

key = random.key(0)
k1, k2 = random.split(key)
n = 200
x = random.uniform(k1, (n, 2), minval=-1.0, maxval=1.0)
true_w = array([2.0, -3.0])
true_b = 0.5
noise = 0.01 * random.normal(k2, (n,))
y = x @ true_w + true_b + noise

# Design matrix with a column of ones for the intercept.
X = concatenate([x, ones((n, 1))], axis=1)
A = X.T @ X
b = X.T @ y

def solve(A, b):
    """Solve A w = b by Gaussian elimination with partial pivoting."""
    m = A.shape[0]
    M = concatenate([A, b[:, None]], axis=1)
    for i in range(m):
        p = i + int(argmax(abs(M[i:, i])))
        if p != i:
            rows = M[[i, p]]
            M[i] = rows[1]
            M[p] = rows[0]
        M[i] = M[i] / M[i, i]
        for j in range(m):
            if j != i:
                M[j] = M[j] - M[j, i] * M[i]
    return M[:, m]

w = solve(A, b)
residual = y - X @ w
print("weights:", w.round(2))
print(f"rmse: {float(sqrt(mean(residual ** 2))):.3f}")
print("close to the truth:", allclose(w, array([2.0, -3.0, 0.5]), atol=0.01))
