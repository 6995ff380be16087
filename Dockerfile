# One image for every Kassa process (the compose file or the orchestrator picks the command).
#   docker build --target production .    the product alone: no dev tooling, no Node
#   docker build --target development .   plus dev/ (kassa_dev) and Node for the local EVM
#                                          chain (anvil and solc from npm, as in `make run`);
#                                          docker-compose.yml builds this one
FROM python:3.11-slim AS product
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt
COPY pyproject.toml Procfile ./
COPY libs ./libs
COPY services ./services
RUN pip install --no-cache-dir --no-deps -e . && useradd --create-home kassa
EXPOSE 8000
CMD ["gunicorn", "-c", "services/api/gunicorn.conf.py", "kassa_api.wsgi:app"]

# The development stack: the product plus dev/ (the compose stack's migrate service deploys
# the dev tokens with it) and the local chain's Node tools.
FROM product AS development
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund --loglevel=error && chown -R kassa /app/node_modules
COPY dev ./dev
RUN pip install --no-cache-dir --no-deps -e dev
USER kassa
EXPOSE 8545

# The production image (the default target): what `product` holds, run as an unprivileged user.
FROM product AS production
USER kassa
