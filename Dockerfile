# One image for every Kassa process (the compose file picks the command), with Node for
# the dev chain: anvil and solc come from npm, as in `make run`.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update && apt-get install -y --no-install-recommends nodejs npm && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --no-audit --no-fund --loglevel=error
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt
COPY libs ./libs
COPY services ./services
COPY Procfile ./
# libs/devtools is the development tooling (the compose stack's migrate service deploys the
# dev tokens with it); no service imports it.
RUN pip install --no-cache-dir --no-deps -e libs/common -e services/api -e services/chain-watcher \
        -e services/webhook-sender -e services/notifier -e services/expirer -e libs/devtools \
    && useradd --create-home kassa && chown -R kassa /app/node_modules
USER kassa
EXPOSE 8000 8545
CMD ["gunicorn", "-c", "services/api/gunicorn.conf.py", "kassa_api.wsgi:app"]
