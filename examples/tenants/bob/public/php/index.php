<?php
// Served by bob's php-fpm pool, as uid 31002.
header("Content-Type: text/plain; charset=utf-8");
printf("Hello from PHP %s, uid %d, pool %s\n", PHP_VERSION, posix_geteuid(), php_sapi_name());
